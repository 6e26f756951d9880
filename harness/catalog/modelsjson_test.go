package catalog_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"

	"github.com/dageval/dageval/harness/catalog"
)

var update = flag.Bool("update", false, "rewrite models.json from models.yaml")

// TestModelsJSONIsCurrent checks that models.json, which Default reads, is
// models.yaml as JSON, and that both give the same catalog.
func TestModelsJSONIsCurrent(t *testing.T) {
	src, err := os.ReadFile("models.yaml")
	require.NoError(t, err)
	var doc any
	require.NoError(t, yaml.Unmarshal(src, &doc))
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", " ")
	require.NoError(t, enc.Encode(doc))
	if *update {
		require.NoError(t, os.WriteFile("models.json", want.Bytes(), 0o644))
	}
	got, err := os.ReadFile("models.json")
	require.NoError(t, err)
	require.Equal(t, want.String(), string(got), "models.json is stale: go test ./harness/catalog -run ModelsJSON -update")

	fromYAML, err := catalog.Parse("models.yaml", src)
	require.NoError(t, err)
	require.Equal(t, fromYAML, catalog.Default())
}
