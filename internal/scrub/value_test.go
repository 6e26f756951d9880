package scrub_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/internal/scrub"
)

type namedString string

// numbers holds no text: Value skips it.
type numbers struct {
	N    int
	F    []float64
	Next *numbers
}

// shapes has every kind of value the walk treats apart.
type shapes struct {
	Any       any
	Anys      []any
	Arr       [3]string
	ByteArr   [4]byte
	Raw       json.RawMessage
	Bytes     []byte
	Named     namedString
	NamedMap  map[string]namedString
	StructMap map[string]record
	PtrMap    map[int]*record
	Strings   map[string]string
	AnyMap    map[string]any
	Nums      []int
	NumPtr    *numbers
	NumMap    map[string]numbers
	Self      *shapes
	Rec       record
	Recs      []*record
	hidden    string
}

// filler makes random values of any type, the same for the same seed:
// strings from pieces (secrets, key shapes, clean text), slices and maps
// nil, empty or not, pointers nil, new, or one made before of the type
// (shared data, cycles).
type filler struct {
	r      *rand.Rand
	pieces []string
	made   map[reflect.Type][]reflect.Value
}

func newFiller(seed uint64, pieces ...string) *filler {
	return &filler{r: rand.New(rand.NewPCG(seed, 7)), made: map[reflect.Type][]reflect.Value{},
		pieces: append(pieces, "", "ok", "secret-value-1", "a secret-value-1 b", "sk-ant-api03-abcdefghijklmnop", "Bearer abcdefghijklmnop0123", "se\"cret+<key>/value", "plain text")}
}

func (f *filler) str() string {
	s := f.pieces[f.r.IntN(len(f.pieces))]
	if f.r.IntN(3) == 0 {
		s += " " + f.pieces[f.r.IntN(len(f.pieces))]
	}
	return s
}

// anyValue is what an interface gets: every kind Value handles apart.
func (f *filler) anyValue(depth int) any {
	switch f.r.IntN(12) {
	case 0:
		return nil
	case 1:
		return f.str()
	case 2:
		return namedString(f.str())
	case 3:
		return []byte(f.str())
	case 4:
		return json.RawMessage(`{"k":"` + f.str() + `"}`)
	case 5:
		return map[string]any{"a": f.anyValue(depth - 1), "b": f.str()}
	case 6:
		return []any{f.anyValue(depth - 1), f.str()}
	case 7:
		return f.r.IntN(10)
	case 8:
		return [2]string{f.str(), f.str()}
	case 9:
		return map[string]string{"k": f.str()}
	case 10:
		var r record
		f.fill(reflect.ValueOf(&r).Elem(), depth-1)
		return r
	default:
		p := new(record)
		f.fill(reflect.ValueOf(p).Elem(), depth-1)
		return p
	}
}

func (f *filler) fill(v reflect.Value, depth int) {
	t := v.Type()
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(f.r.IntN(100)))
	case reflect.Uint8:
		v.SetUint(uint64(f.r.IntN(256)))
	case reflect.Float64:
		v.SetFloat(f.r.Float64())
	case reflect.Interface:
		if depth > 0 {
			if a := f.anyValue(depth); a != nil {
				v.Set(reflect.ValueOf(a))
			}
		}
	case reflect.Pointer:
		if depth <= 0 {
			return
		}
		switch k := f.r.IntN(4); {
		case k == 0:
		case k == 1 && len(f.made[t]) > 0:
			v.Set(f.made[t][f.r.IntN(len(f.made[t]))])
		default:
			p := reflect.New(t.Elem())
			f.made[t] = append(f.made[t], p)
			f.fill(p.Elem(), depth-1)
			v.Set(p)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && f.r.IntN(2) == 0 {
			v.SetBytes([]byte(`{"text":"` + f.str() + `"}`))
			return
		}
		if depth <= 0 || f.r.IntN(4) == 0 {
			return
		}
		n := f.r.IntN(4)
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			f.fill(s.Index(i), depth-1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), depth-1)
		}
	case reflect.Map:
		if depth <= 0 || f.r.IntN(4) == 0 {
			return
		}
		m := reflect.MakeMap(t)
		for range f.r.IntN(4) {
			k := reflect.New(t.Key()).Elem()
			f.fill(k, 1)
			e := reflect.New(t.Elem()).Elem()
			f.fill(e, depth-1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				f.fill(v.Field(i), depth)
			}
		}
	default:
		panic("filler: no values of " + t.String())
	}
}

// checkValueAsReference fills two values of T alike from seed, scrubs one
// with Value and the other with ReferenceValue, and fails unless they
// come out equal, with the same report.
func checkValueAsReference[T any](t testing.TB, s *scrub.Scrubber, seed uint64, pieces ...string) {
	t.Helper()
	var a, b T
	newFiller(seed, pieces...).fill(reflect.ValueOf(&a).Elem(), 5)
	newFiller(seed, pieces...).fill(reflect.ValueOf(&b).Elem(), 5)
	require.True(t, reflect.DeepEqual(&a, &b), "seed %d: the filler is not deterministic", seed)
	changed, want := s.Value(&a), s.ReferenceValue(&b)
	require.Equal(t, want, changed, "seed %d: Value's report", seed)
	if !reflect.DeepEqual(&a, &b) {
		require.Equal(t, b, a, "seed %d: Value scrubbed otherwise than the walk of everything", seed)
		t.Fatalf("seed %d: Value scrubbed otherwise than the walk of everything", seed)
	}
}

// Value, which skips what holds no text and caches what it knows of each
// type, scrubs exactly as the walk of everything did: random cell details
// and values of every shape the walk treats apart, shared and cyclic.
func TestValueAsReference(t *testing.T) {
	s := scrub.New("secret-value-1", `se"cret+<key>/value`)
	for seed := range uint64(3000) {
		checkValueAsReference[shapes](t, s, seed)
		checkValueAsReference[evals.CellDetail](t, s, seed)
		checkValueAsReference[evals.CellResult](t, s, seed)
		// One value alone, so that its report is the whole report.
		checkValueAsReference[struct{ Any any }](t, s, seed)
		checkValueAsReference[struct{ M map[string]string }](t, s, seed)
		checkValueAsReference[struct{ P *record }](t, s, seed)
	}
	checkValueAsReference[shapes](t, nil, 1)

	// More pointers than the walk keeps on the stack, visited again.
	many := func() []*record {
		var rs []*record
		for i := range 40 {
			rs = append(rs, &record{Name: "secret-value-1", Any: []any{i}})
		}
		for i := range 40 {
			rs[i].Inner = rs[(i*7)%40]
		}
		return append(rs, rs...)
	}
	a, b := many(), many()
	require.Equal(t, s.ReferenceValue(&b), s.Value(&a))
	require.Equal(t, b, a)
}

// FuzzValueAsReference is TestValueAsReference with the fuzzer's strings.
func FuzzValueAsReference(f *testing.F) {
	f.Add(uint64(1), "secret-value-1", "x")
	f.Add(uint64(2), "xoxb-1234567890-abcdef", "\xff")
	s := scrub.New("secret-value-1", `se"cret+<key>/value`)
	f.Fuzz(func(t *testing.T, seed uint64, a, b string) {
		checkValueAsReference[shapes](t, s, seed, a, b)
		checkValueAsReference[evals.CellDetail](t, s, seed, a, b)
	})
}
