package benchkit

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestPeakProcessMemoryIsTheChildsOwn: a child of this process reports its
// own peak RSS, not the pages it shared with this one before exec, which
// the child's rusage counts.
func TestPeakProcessMemoryIsTheChildsOwn(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	ballast := make([]byte, 256<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	stop := PeakProcessMemory(cmd.Process.Pid, time.Millisecond)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := stop()
	if seen.RSS == 0 || seen.Anon == 0 {
		t.Fatalf("nothing sampled: %+v", seen)
	}
	if seen.RSS >= 128<<20 {
		t.Errorf("sleep's peak RSS is %d MiB: this process's 256 MiB counted", seen.RSS>>20)
	}
	_ = ballast[len(ballast)-1]
}
