package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// synthesizeID makes a tool-call id for servers that send none (Gemini's
// compatible endpoint, some local servers). It is derived from the answer
// and the conversation length, so a replayed run gets the same ids and two
// identical calls in different turns get different ones.
func synthesizeID(responseID string, nMessages, index int, name, args string) string {
	h := sha256.New()
	for _, part := range []string{responseID, strconv.Itoa(nMessages), strconv.Itoa(index), name, args} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "call_" + hex.EncodeToString(h.Sum(nil))[:24]
}
