// Package backend defines where an agent's files live and its commands run — agent state, a cross-thread key-value store, a directory on disk, prefix-routed composites, a local shell and sandboxes — behind one small interface.
//
// # Choices where Deep Agents behaves accidentally
//
// The Go port follows the Deep Agents backend contract, except where the
// Python harness does something a careful user would not expect:
//
//   - Composite route prefixes are normalised to end with "/" (Deep Agents
//     drops the last character of a prefix without one when it maps results
//     back). Searches and listings above routes also cover routes mounted
//     deeper than "/", and default-backend entries hidden by a route are left
//     out instead of being listed twice.
//   - The State backend records non-UTF-8 uploads with Encoding "base64"
//     (Deep Agents stores base64 text marked "utf-8").
//   - The Filesystem backend returns an empty file's content as it is, like
//     the other backends, instead of replacing it with a reminder string
//     that the read_file tool would then number as line 1.
//   - Every backend fails the same way: Ls of a missing path is
//     FileNotFound and of a file NotADirectory; Read of a directory is
//     IsDirectory; writing over a directory or below a file is refused;
//     deleting "/" is refused. (Deep Agents' in-memory backends list
//     nothing and let a file and a directory share a name.)
//   - The Filesystem backend confines both modes to the root directory:
//     HostPaths (Deep Agents' non-virtual mode) accepts host paths but,
//     unlike Deep Agents, never ones outside the root. All access goes
//     through os.Root, so symlinks cannot lead out either.
//   - Paths are checked for more hostile spellings than Deep Agents checks
//     (percent-encoded traversal, invalid UTF-8 such as overlong encodings,
//     control characters, UNC prefixes); see ValidatePath.
//   - LocalShell's id is derived from its root directory, so assembled
//     agents stay byte-identical across runs.
//   - Grep is implemented in Go for every backend (no ripgrep), so results do
//     not depend on what is installed; the Filesystem backend skips binary
//     files.
//
// # Sandboxes
//
// Deep Agents' sandbox backends (Modal, Daytona, Runloop, Docker) are
// long-lived containers that a provider implements with execute, upload and
// download; here a Sandbox is an Executor with a Lifecycle, started and
// closed once per eval cell. The local one, Bubblewrap, differs from a
// container on purpose: every command gets namespaces of its own, so a
// background process ends with the command that started it and /tmp is
// private to each command (only the workspace carries state from one
// command to the next). That is what makes "nothing outlives its cell"
// hold without cgroups. Its file operations act on the workspace directly
// rather than through shell scripts, so they behave exactly like the
// Filesystem backend's.
package backend
