// The bytes an unprivileged writer may still put on the file system of a directory
// (statvfs: f_bavail blocks of f_frsize bytes; root's reserve is not counted, the daemon may
// not run as root). A download asks before it starts: a model that cannot fit is refused
// rather than left half-written on a full disk.
//
// Thread-safety: pure function.
#ifndef LLMD_FETCH_FREE_SPACE_H_
#define LLMD_FETCH_FREE_SPACE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "llmd/result.h"

namespace llmd::fetch {

Result<uint64_t> FreeBytes(const std::string& directory);

// What a download asks for free space (injectable: the tests play a full disk).
using FreeBytesFn = std::function<Result<uint64_t>(const std::string& directory)>;

// OK when `free_bytes(directory)` leaves room for `remaining` bytes plus `margin`; else
// ResourceExhausted saying what is needed and what is free.
Status CheckRoomFor(const std::string& directory, uint64_t remaining, uint64_t margin,
                    const FreeBytesFn& free_bytes);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_FREE_SPACE_H_
