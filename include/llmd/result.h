// llmd::Result<T, E = Status>: either a value of type T or an error of type E.
//
// Accessors are named like std::expected (has_value, value, error, *, ->) so that moving to
// C++23 is mechanical. Calling value() on an error is a bug and aborts.
//
// Thread-safety: a value type.
#ifndef LLMD_RESULT_H_
#define LLMD_RESULT_H_

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>
#include <variant>

#include "llmd/status.h"

namespace llmd {

template <typename T, typename E = Status>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(E error) : state_(std::move(error)) {   // NOLINT: implicit by design
    if constexpr (std::is_same_v<E, Status>) {
      if (std::get<Status>(state_).ok()) Die("Result constructed from an OK Status");
    }
  }

  bool has_value() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return has_value(); }

  T& value() & { return Checked(); }
  const T& value() const& { return const_cast<Result*>(this)->Checked(); }
  T&& value() && { return std::move(Checked()); }

  // The error; E{} (OK for Status) when this holds a value.
  E error() const { return has_value() ? E{} : std::get<E>(state_); }

  T& operator*() & { return Checked(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &value(); }

 private:
  [[noreturn]] static void Die(const char* what) {
    std::fprintf(stderr, "llmd: fatal: %s\n", what);
    std::abort();
  }
  T& Checked() {
    if (!has_value()) Die("Result::value() on an error");
    return std::get<T>(state_);
  }

  std::variant<T, E> state_;
};

}  // namespace llmd

#define LLMD_CONCAT_INNER_(a, b) a##b
#define LLMD_CONCAT_(a, b) LLMD_CONCAT_INNER_(a, b)

// Evaluates `expr` (a Result<T>); on error returns its Status, else moves the value into `lhs`.
// `lhs` may be a declaration: LLMD_ASSIGN_OR_RETURN(auto file, OpenFile(path));
#define LLMD_ASSIGN_OR_RETURN(lhs, expr) \
  LLMD_ASSIGN_OR_RETURN_IMPL_(LLMD_CONCAT_(llmd_result_, __LINE__), lhs, expr)
#define LLMD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.has_value()) return tmp.error();         \
  lhs = std::move(tmp).value()

#endif  // LLMD_RESULT_H_
