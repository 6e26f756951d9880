package cassette_test

import (
	"testing"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/internal/fuzzseed"
)

// FuzzParseCassette feeds the cassette parser mutations of the small
// recorded cassettes (the quirks and the imported third-party recordings;
// the quickstart's are 35-126 KB, too big to seed, see fuzzseed).
func FuzzParseCassette(f *testing.F) {
	fuzzseed.Add(f, 10, "../../cassettes/quirks/*.yaml", "../../cassettes/thirdparty/*/imported/*/*.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := cassette.Parse("c.yaml", data)
		if err == nil && c == nil {
			t.Fatal("no cassette and no error")
		}
	})
}

// FuzzImportVCRPy feeds the vcrpy importer mutations of the third-party
// recordings.
func FuzzImportVCRPy(f *testing.F) {
	fuzzseed.Add(f, 10, "../../cassettes/thirdparty/*/*/*.yaml", "../../cassettes/thirdparty/*/*/*/*.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := cassette.ImportVCRPy("v.yaml", data)
		if err == nil && c == nil {
			t.Fatal("no cassette and no error")
		}
	})
}
