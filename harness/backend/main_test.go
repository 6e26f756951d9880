package backend_test

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// dialEnv, when set, turns the test binary into a probe that dials the
// address it names and reports the outcome: sandbox tests copy the binary
// into a sandbox to see whether the network can be reached from inside.
const dialEnv = "DAGEVAL_TEST_DIAL"

func TestMain(m *testing.M) {
	if addr := os.Getenv(dialEnv); addr != "" {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Println("dial failed:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
