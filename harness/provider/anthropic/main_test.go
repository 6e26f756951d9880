package anthropic_test

import (
	"os"
	"testing"

	"github.com/dageval/dageval/harness/provider/internal/recorded"
)

func TestMain(m *testing.M) {
	recorded.LoopbackOnly()
	os.Exit(m.Run())
}
