// A cell's files written through temporaries named by host and pid, and the temporaries that
// killed runs left behind removed only when no run can still be writing them.
#pragma once

#include <string>

namespace ordo::cli::sweep {

// How old a temporary of another host (or of a live pid: the pid may be reused) must be before it
// counts as abandoned: a run holds its temporary for the milliseconds between writing and renaming
// its result, so an hour is far past any live writer, and past clock skew between nodes.
constexpr long long kStaleTempSeconds = 3600;

// This writer's place as a file-name token with no '.': the host name, its boot (a reboot reuses
// pids) and its pid namespace (containers on one host share its name and boot, not its pids). Two
// writers with one token can ask after each other's pids; any other token is another node's.
std::string writer_token();

// `bytes` into `path` atomically: DIR/.NAME.TOKEN.PID.tmp (created exclusively; TOKEN: the host
// name, its boot and pid namespace), synced, renamed over DIR/NAME. Error naming the path.
void write_cell_file(const std::string& path, const std::string& bytes);

// Removes the temporaries in `dir` of the file `name` ("": of every file) whose writer is gone: with
// this writer's token (same host, boot and pid namespace), a pid that no longer runs; from anywhere,
// older than kStaleTempSeconds (the only evidence a shared file system gives of another node's
// process). Returns how many it removed.
size_t remove_stale_temps(const std::string& dir, const std::string& name = "");

}  // namespace ordo::cli::sweep
