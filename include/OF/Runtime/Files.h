//===- Files.h - Opening inputs and writing files safely ---------*- C++
//-*-===//
//
// What libofrt and of-run read and write outside a plan: only regular files
// are read (a FIFO without a writer would block forever, /dev/zero never
// ends), opened without blocking so that refusing one cannot hang; a file is
// saved by writing `<path>.tmp.<pid>` beside it, created exclusively and
// never through a symbolic link, then renamed over `<path>`; temporary
// files of saves that died (their process is gone) are removed by the next
// save to the same path. POSIX only, header-only, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef OF_RUNTIME_FILES_H
#define OF_RUNTIME_FILES_H

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace of::files {

/// Opens `path` for reading if it is a regular file; -1 with `error` set
/// otherwise (never blocks on a FIFO or a device). `what` names the file
/// in the message ("the checkpoint ", or empty).
inline int openRegular(const std::string &path, std::string &error,
                       const std::string &what = "") {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open " + what + "'" + path + "': " + std::strerror(errno);
    return -1;
  }
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    error = what + "'" + path +
            "' is not a regular file (a FIFO, a device or a directory cannot "
            "be read as one)";
    return -1;
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

/// The temporary file a save of `path` writes before renaming it.
inline std::string temporaryOf(const std::string &path) {
  return path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
}

/// Removes `<path>.tmp.<pid>` files beside `path` whose process is gone
/// (saves killed before their rename).
inline void removeStaleTemporaries(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  std::string prefix =
      (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  while (struct dirent *entry = ::readdir(d)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    std::string digits = name.substr(prefix.size());
    char *end = nullptr;
    long pid = std::strtol(digits.c_str(), &end, 10);
    if (digits.empty() || *end || pid <= 0 || pid == ::getpid())
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      ::unlinkat(::dirfd(d), name.c_str(),
                 0); // a link is removed, not followed
  }
  ::closedir(d);
}

/// Creates `temp` for writing: exclusively and without following a link
/// at its name (one left there is removed first, not written through).
inline int createTemporary(const std::string &temp, std::string &error) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(temp.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
      return fd;
    if (errno != EEXIST || attempt)
      break;
    ::unlink(temp.c_str()); // a leftover of this pid, or a planted link
  }
  error = "cannot create '" + temp + "': " + std::strerror(errno);
  return -1;
}

} // namespace of::files

#endif // OF_RUNTIME_FILES_H
