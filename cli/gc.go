package cli

import (
	"sync"

	"github.com/dageval/dageval/internal/gcpercent"
)

// tuneGC raises the collector's target for the command's run, once (see
// gcpercent.Replay): a program that embeds the CLI keeps its own setting
// until Main runs. The dageval command raises it earlier, while its
// packages initialise (internal/gcpercent/atstart).
var tuneGC = sync.OnceFunc(gcpercent.Raise)
