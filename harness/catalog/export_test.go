package catalog

// EmbeddedYAML is the embedded catalog file, for the benchmarks.
func EmbeddedYAML() []byte { return embedded }

// DecodeEmbedded is what Default does once.
var DecodeEmbedded = decodeEmbedded
