package cassette

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"mime"
	"strings"
)

// EventStreamContentType is the Content-Type of AWS's binary event-stream
// framing, in which Amazon Bedrock streams its answers.
const EventStreamContentType = "application/vnd.amazon.eventstream"

// IsEventStreamType reports whether a Content-Type names AWS's binary
// event-stream framing.
func IsEventStreamType(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == EventStreamContentType
}

// EventStreamMessage is one message of AWS's binary event-stream framing.
type EventStreamMessage struct {
	// Headers holds the message's string headers (":message-type",
	// ":event-type", ":content-type", ...); headers of other types are
	// checked and skipped.
	Headers map[string]string
	Payload []byte
	// Offset is where the message starts in the stream, for messages.
	Offset int
}

// Sizes of the framing: a 12-byte prelude (total length, headers length,
// prelude CRC) and a 4-byte message CRC, all big-endian.
const (
	esPrelude = 12
	esTrailer = 4
	esMinimum = esPrelude + esTrailer
)

// ParseEventStream splits body into its messages, checking each length and
// both CRCs, as the SDK's decoder does before it hands an event on.
func ParseEventStream(body []byte) ([]EventStreamMessage, error) {
	var out []EventStreamMessage
	for off := 0; off < len(body); {
		rest := body[off:]
		if len(rest) < esMinimum {
			return out, fmt.Errorf("event stream byte %d: %d bytes left, fewer than a message's %d-byte framing", off, len(rest), esMinimum)
		}
		total := int(binary.BigEndian.Uint32(rest[0:4]))
		hlen := int(binary.BigEndian.Uint32(rest[4:8]))
		if crc := binary.BigEndian.Uint32(rest[8:12]); crc != crc32.ChecksumIEEE(rest[:8]) {
			return out, fmt.Errorf("event stream byte %d: prelude checksum mismatch", off)
		}
		if total < esMinimum || total > len(rest) || hlen > total-esMinimum {
			return out, fmt.Errorf("event stream byte %d: message length %d (headers %d) does not fit the %d bytes left", off, total, hlen, len(rest))
		}
		msg := rest[:total]
		if crc := binary.BigEndian.Uint32(msg[total-esTrailer:]); crc != crc32.ChecksumIEEE(msg[:total-esTrailer]) {
			return out, fmt.Errorf("event stream byte %d: message checksum mismatch", off)
		}
		headers, err := parseEventStreamHeaders(msg[esPrelude : esPrelude+hlen])
		if err != nil {
			return out, fmt.Errorf("event stream byte %d: %w", off, err)
		}
		out = append(out, EventStreamMessage{Headers: headers, Payload: msg[esPrelude+hlen : total-esTrailer], Offset: off})
		off += total
	}
	return out, nil
}

// Header value types of the framing and the sizes of the fixed-size ones.
var esFixed = map[byte]int{0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}

const (
	esBytes  = 6
	esString = 7
)

func parseEventStreamHeaders(b []byte) (map[string]string, error) {
	out := map[string]string{}
	for len(b) > 0 {
		n := int(b[0])
		if len(b) < 1+n+1 {
			return nil, errors.New("a header name runs past the headers")
		}
		name, typ := string(b[1:1+n]), b[1+n]
		b = b[2+n:]
		if size, ok := esFixed[typ]; ok {
			if len(b) < size {
				return nil, fmt.Errorf("header %s runs past the headers", name)
			}
			b = b[size:]
			continue
		}
		if typ != esBytes && typ != esString {
			return nil, fmt.Errorf("header %s has unknown value type %d", name, typ)
		}
		if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
			return nil, fmt.Errorf("header %s runs past the headers", name)
		}
		l := int(binary.BigEndian.Uint16(b))
		if typ == esString {
			out[name] = string(b[2 : 2+l])
		}
		b = b[2+l:]
	}
	return out, nil
}

// AppendEventStreamMessage appends one message with string headers (in
// the order given) and payload, framed as AWS's event stream frames it.
func AppendEventStreamMessage(dst []byte, headers [][2]string, payload []byte) []byte {
	var h []byte
	for _, kv := range headers {
		h = append(h, byte(len(kv[0])))
		h = append(h, kv[0]...)
		h = append(h, esString)
		h = binary.BigEndian.AppendUint16(h, uint16(len(kv[1])))
		h = append(h, kv[1]...)
	}
	start := len(dst)
	total := esMinimum + len(h) + len(payload)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(h)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:start+8]))
	dst = append(dst, h...)
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// BedrockChunk is what one event of a Bedrock stream carries: a chunk of
// the Messages API stream (Event and Data as the SDK re-frames them as
// server-sent events), or an exception.
type BedrockChunk struct {
	Event string
	Data  []byte
	// Exception names an exception message (":exception-type"), whose
	// payload Data is then.
	Exception string
}

// BedrockChunks reads a Bedrock event stream the way the SDK does: each
// "chunk" event's payload is {"bytes": base64 of one Messages API event}.
func BedrockChunks(body []byte) ([]BedrockChunk, error) {
	msgs, err := ParseEventStream(body)
	if err != nil {
		return nil, err
	}
	var out []BedrockChunk
	for _, m := range msgs {
		switch m.Headers[":message-type"] {
		case "event":
			if m.Headers[":event-type"] != "chunk" {
				continue
			}
			var p struct {
				Bytes string `json:"bytes"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				return out, fmt.Errorf("event stream byte %d: chunk payload is not JSON: %v", m.Offset, err)
			}
			data, err := base64.StdEncoding.DecodeString(p.Bytes)
			if err != nil {
				return out, fmt.Errorf("event stream byte %d: chunk bytes are not base64: %v", m.Offset, err)
			}
			var e struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(data, &e); err != nil {
				return out, fmt.Errorf("event stream byte %d: chunk is not a JSON event: %v", m.Offset, err)
			}
			out = append(out, BedrockChunk{Event: e.Type, Data: data})
		case "exception", "error":
			out = append(out, BedrockChunk{Exception: firstNonEmptyString(m.Headers[":exception-type"], m.Headers[":error-code"], "error"), Data: m.Payload})
		}
	}
	return out, nil
}

// eventStreamText is what a Bedrock stream says, decoded from its framing
// and base64, one event per line: what the secret scan reads besides the
// raw bytes, where an echoed key would hide inside base64.
func eventStreamText(body string) string {
	chunks, _ := BedrockChunks([]byte(body))
	var b strings.Builder
	for _, c := range chunks {
		b.Write(bytes.TrimSpace(c.Data))
		b.WriteByte('\n')
	}
	return b.String()
}

func firstNonEmptyString(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
