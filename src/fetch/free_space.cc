// FreeBytes over statvfs.
// Thread-safety: pure function.
#include "fetch/free_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace llmd::fetch {

Result<uint64_t> FreeBytes(const std::string& directory) {
  struct statvfs s {};
  if (::statvfs(directory.c_str(), &s) != 0) {
    return UnavailableError("statvfs " + directory + ": " + std::strerror(errno));
  }
  return static_cast<uint64_t>(s.f_bavail) * static_cast<uint64_t>(s.f_frsize);
}

Status CheckRoomFor(const std::string& directory, uint64_t remaining, uint64_t margin,
                    const FreeBytesFn& free_bytes) {
  LLMD_ASSIGN_OR_RETURN(uint64_t free, free_bytes(directory));
  const uint64_t needed = remaining + margin;
  if (free >= needed) return Status::Ok();
  return ResourceExhaustedError("not enough free space in " + directory + ": " +
                                std::to_string(needed) + " bytes needed (" +
                                std::to_string(remaining) + " to download and a margin of " +
                                std::to_string(margin) + "), " + std::to_string(free) + " free");
}

}  // namespace llmd::fetch
