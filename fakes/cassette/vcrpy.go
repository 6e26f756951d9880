package cassette

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v4"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// ImportVCRPyFile reads a vcrpy cassette (.yaml, or gzip-compressed
// .yaml.gz) and converts it with ImportVCRPy.
func ImportVCRPyFile(path string) (*Cassette, error) {
	data, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	return ImportVCRPy(path, data)
}

// ImportVCRPy converts a vcrpy cassette into a go-vcr cassette that replays
// in order (MatchOrder), since its request bodies came from another client.
//
// Bodies may be vcrpy's body / body.string (kept byte for byte, SSE streams
// included; gzip or deflate bodies are decoded) or pydantic-ai's parsed_body,
// which is re-serialised as compact JSON with the keys in file order and the
// numbers as written. Headers given as lists become http.Header; the
// content-length and transfer-encoding headers become the matching go-vcr
// fields, since a re-serialised body need not have the original length.
// Sensitive headers and query parameters are redacted as when recording.
// name labels errors, which carry the line of the offending field.
func ImportVCRPy(name string, data []byte) (*Cassette, error) {
	return parseVCRPy(name, data, true)
}

// parseVCRPy converts without redacting when redact is false, which is how
// lint sees what a vcrpy file really holds.
func parseVCRPy(name string, data []byte, redact bool) (*Cassette, error) {
	root, err := loadNode(name, data)
	if err != nil {
		return nil, err
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	p := vcrpyParser{name: name, redact: redact}
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "", "a vcrpy cassette is a mapping with interactions and version")
	}
	if v := mappingValue(root, "version"); v != nil && v.Value != "1" {
		if v.Value == "2" {
			return nil, p.errf(v, "version", "version 2 is a go-vcr cassette, not vcrpy; it needs no import")
		}
		return nil, p.errf(v, "version", "got %q, want 1 (vcrpy)", v.Value)
	}
	seq := mappingValue(root, "interactions")
	if seq == nil {
		return nil, p.errf(root, "interactions", "missing")
	}
	if seq.Kind != yaml.SequenceNode {
		return nil, p.errf(seq, "interactions", "want a list")
	}
	c := &Cassette{
		Version: vcr.CassetteFormatVersion,
		Meta:    &Meta{Match: MatchOrder, Source: "vcrpy: " + filepath.Base(name)},
		Path:    name,
	}
	for i, n := range seq.Content {
		it, err := p.interaction(n, fmt.Sprintf("interactions[%d]", i))
		if err != nil {
			return nil, err
		}
		it.ID = i
		c.Interactions = append(c.Interactions, it)
		c.Lines = append(c.Lines, n.Line)
	}
	return c, nil
}

type vcrpyParser struct {
	name   string
	redact bool
}

func (p vcrpyParser) redactHeaders(h http.Header) http.Header {
	if !p.redact {
		return h
	}
	return RedactHeaders(h)
}

func (p vcrpyParser) errf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return &ParseError{File: p.name, Line: line, Msg: msg}
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func (p vcrpyParser) interaction(n *yaml.Node, at string) (*vcr.Interaction, error) {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, at, "want a mapping with request and response")
	}
	reqN, respN := resolveAlias(mappingValue(n, "request")), resolveAlias(mappingValue(n, "response"))
	if reqN == nil || reqN.Kind != yaml.MappingNode {
		return nil, p.errf(n, at+".request", "missing or not a mapping")
	}
	if respN == nil || respN.Kind != yaml.MappingNode {
		return nil, p.errf(n, at+".response", "missing or not a mapping")
	}
	it := &vcr.Interaction{}

	// Request.
	method, err := p.scalar(reqN, at+".request", "method", true)
	if err != nil {
		return nil, err
	}
	uri, err := p.scalar(reqN, at+".request", "uri", true)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, p.errf(mappingValue(reqN, "uri"), at+".request.uri", "%q is not an absolute URL", uri)
	}
	reqH, err := p.headers(reqN, at+".request")
	if err != nil {
		return nil, err
	}
	reqBody, err := p.body(reqN, at+".request", false, reqH)
	if err != nil {
		return nil, err
	}
	host := u.Host
	if h := reqH.Get("Host"); h != "" {
		host = h
	}
	for _, h := range []string{"Host", "Content-Length", "Transfer-Encoding"} {
		reqH.Del(h)
	}
	redURL := uri
	if p.redact {
		redURL, _ = redactURL(uri)
	}
	it.Request = vcr.Request{
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		ContentLength: int64(len(reqBody)),
		Host:          host,
		Body:          reqBody,
		Headers:       p.redactHeaders(reqH),
		URL:           redURL,
		Method:        strings.ToUpper(method),
	}

	// Response.
	statusN := resolveAlias(mappingValue(respN, "status"))
	if statusN == nil || statusN.Kind != yaml.MappingNode {
		return nil, p.errf(respN, at+".response.status", "missing or not a mapping with code and message")
	}
	codeS, err := p.scalar(statusN, at+".response.status", "code", true)
	if err != nil {
		return nil, err
	}
	code, err := strconv.Atoi(codeS)
	if err != nil || code < 100 || code > 599 {
		return nil, p.errf(mappingValue(statusN, "code"), at+".response.status.code", "%q is not an HTTP status", codeS)
	}
	msg, err := p.scalar(statusN, at+".response.status", "message", false)
	if err != nil {
		return nil, err
	}
	respH, err := p.headers(respN, at+".response")
	if err != nil {
		return nil, err
	}
	respBody, err := p.body(respN, at+".response", true, respH)
	if err != nil {
		return nil, err
	}
	var te []string
	if v := respH.Get("Transfer-Encoding"); v != "" {
		te = []string{v}
	}
	respH.Del("Transfer-Encoding")
	respH.Del("Content-Length")
	status := statusText(code)
	if msg != "" {
		status = fmt.Sprintf("%d %s", code, msg)
	}
	it.Response = vcr.Response{
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		TransferEncoding: te,
		ContentLength:    int64(len(respBody)),
		Body:             respBody,
		Headers:          p.redactHeaders(respH),
		Status:           status,
		Code:             code,
	}
	return it, nil
}

func (p vcrpyParser) scalar(m *yaml.Node, at, key string, required bool) (string, error) {
	v := resolveAlias(mappingValue(m, key))
	if v == nil || v.Tag == "!!null" {
		if required {
			return "", p.errf(m, at+"."+key, "missing")
		}
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", p.errf(v, at+"."+key, "want a single value")
	}
	return v.Value, nil
}

// headers reads vcrpy headers: a mapping from name to a list of values (or
// one value). Names are canonicalised as net/http does.
func (p vcrpyParser) headers(m *yaml.Node, at string) (http.Header, error) {
	h := http.Header{}
	n := resolveAlias(mappingValue(m, "headers"))
	if n == nil || n.Tag == "!!null" {
		return h, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, at+".headers", "want a mapping from header name to values")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := n.Content[i].Value
		v := resolveAlias(n.Content[i+1])
		switch v.Kind {
		case yaml.ScalarNode:
			h.Add(name, v.Value)
		case yaml.SequenceNode:
			for _, x := range v.Content {
				x = resolveAlias(x)
				if x.Kind != yaml.ScalarNode {
					return nil, p.errf(x, at+".headers."+name, "want text values")
				}
				h.Add(name, x.Value)
			}
		default:
			return nil, p.errf(v, at+".headers."+name, "want a value or a list of values")
		}
	}
	return h, nil
}

// body reads body (a string, or for responses a mapping with string) or
// parsed_body. h is updated when a compressed body is decoded.
func (p vcrpyParser) body(m *yaml.Node, at string, response bool, h http.Header) (string, error) {
	raw := resolveAlias(mappingValue(m, "body"))
	parsed := mappingValue(m, "parsed_body")
	if raw != nil && raw.Tag != "!!null" && parsed != nil {
		return "", p.errf(parsed, at+".parsed_body", "both body and parsed_body are present")
	}
	if parsed != nil {
		var b bytes.Buffer
		if err := p.json(&b, parsed, at+".parsed_body"); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	if raw == nil || raw.Tag == "!!null" {
		return "", nil
	}
	field := at + ".body"
	if raw.Kind == yaml.MappingNode {
		s := resolveAlias(mappingValue(raw, "string"))
		if s == nil || s.Tag == "!!null" {
			return "", nil
		}
		raw, field = s, field+".string"
	}
	if raw.Kind != yaml.ScalarNode {
		return "", p.errf(raw, field, "want text")
	}
	if raw.Tag != "!!binary" {
		return raw.Value, nil
	}
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(raw.Value), ""))
	if err != nil {
		return "", p.errf(raw, field, "bad !!binary data: %v", err)
	}
	enc := strings.ToLower(h.Get("Content-Encoding"))
	var rd io.Reader
	switch enc {
	case "":
		return string(data), nil
	case "gzip", "x-gzip":
		rd, err = gzip.NewReader(bytes.NewReader(data))
	case "deflate":
		rd, err = zlib.NewReader(bytes.NewReader(data))
	default:
		return "", p.errf(raw, field, "content-encoding %q is not supported; re-record with vcrpy's decode_compressed_response=True", enc)
	}
	if err == nil {
		data, err = io.ReadAll(rd)
	}
	if err != nil {
		return "", p.errf(raw, field, "decoding %s body: %v", enc, err)
	}
	h.Del("Content-Encoding")
	return string(data), nil
}

var jsonNumber = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)
})

// json writes a YAML node as compact JSON, keeping mapping order and the
// text of numbers.
func (p vcrpyParser) json(b *bytes.Buffer, n *yaml.Node, at string) error {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolveAlias(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return p.errf(k, at, "a mapping key must be text to become JSON")
			}
			if k.Tag == "!!merge" {
				return p.errf(k, at, "merge keys (<<) are not supported")
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k.Value)
			b.WriteByte(':')
			if err := p.json(b, n.Content[i+1], at+"."+k.Value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, x := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := p.json(b, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			v, err := strconv.ParseBool(strings.ToLower(n.Value))
			if err != nil {
				return p.errf(n, at, "%q is not a boolean", n.Value)
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!int":
			if jsonNumber().MatchString(n.Value) {
				b.WriteString(n.Value)
				return nil
			}
			v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
			if err != nil {
				return p.errf(n, at, "%q is not an integer", n.Value)
			}
			b.WriteString(strconv.FormatInt(v, 10))
		case "!!float":
			if jsonNumber().MatchString(n.Value) {
				b.WriteString(n.Value)
				return nil
			}
			v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
				return p.errf(n, at, "%q cannot be written as a JSON number", n.Value)
			}
			out, _ := json.Marshal(v)
			b.Write(out)
		default: // !!str, !!binary, !!timestamp and custom tags keep their text
			writeJSONString(b, n.Value)
		}
	default:
		return p.errf(n, at, "unsupported YAML node")
	}
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode appends a newline
}
