package scrub

import (
	"reflect"
	"slices"
	"sync"
)

// Value scrubs every string and byte slice reachable from v, a pointer, in
// place: struct fields (exported ones), slice and array elements, map
// values, what pointers and interfaces hold. It reports whether anything
// changed; a value without secrets is left exactly as it was.
//
// Values of a type that cannot hold a string, a byte slice or an
// interface are not walked (see holdsText): a pointer among them is not
// marked seen either, which changes what is walked only for a pointer to
// where another value starts (a struct's first field), which such data
// does not hold.
func (s *Scrubber) Value(v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	w := walker{s: s}
	return w.walk(rv.Elem())
}

// walker keeps the pointers it visited, so that shared or cyclic data is
// walked once: the first few in few, on the stack (a cell holds a handful),
// then in seen.
type walker struct {
	s    *Scrubber
	few  [16]uintptr
	nfew int
	seen map[uintptr]bool
}

// visit reports whether p is visited for the first time, and marks it.
func (w *walker) visit(p uintptr) bool {
	if w.seen != nil {
		if w.seen[p] {
			return false
		}
		w.seen[p] = true
		return true
	}
	if slices.Contains(w.few[:w.nfew], p) {
		return false
	}
	if w.nfew < len(w.few) {
		w.few[w.nfew] = p
		w.nfew++
		return true
	}
	w.seen = make(map[uintptr]bool, 2*len(w.few))
	for _, q := range w.few {
		w.seen[q] = true
	}
	w.seen[p] = true
	return true
}

// typeInfo is what the walk needs to know of a type, found once per type:
// record scrubs every cell's result and detail, and looking up each
// struct field (reflect.Type.Field) was two fifths of scrubbing one.
type typeInfo struct {
	holdsText bool
	// fields are the indices of the exported fields that hold text, of a
	// struct, in order.
	fields []int
}

var typeInfos sync.Map // reflect.Type → *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{holdsText: holdsText(t, map[reflect.Type]bool{})}
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && infoOf(f.Type).holdsText {
				ti.fields = append(ti.fields, i)
			}
		}
	}
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// holdsText reports whether a value of type t can reach a string, a byte
// slice or an interface (which can hold either) through what the walk
// follows; visiting holds the types on the way, which a cycle does not
// add to.
func holdsText(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if visiting[t] {
		return false
	}
	visiting[t] = true
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8 || holdsText(t.Elem(), visiting)
	case reflect.Array, reflect.Pointer, reflect.Map:
		return holdsText(t.Elem(), visiting)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsText(f.Type, visiting) {
				return true
			}
		}
	}
	return false
}

func (w *walker) walk(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); s != "" {
			if t := w.s.String(s); t != s && v.CanSet() {
				v.SetString(t)
				return true
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			return false
		}
		et := v.Type().Elem()
		if et.Kind() == reflect.Uint8 {
			b := v.Bytes()
			if t := w.s.Bytes(b); len(t) != len(b) || string(t) != string(b) {
				if v.CanSet() {
					v.SetBytes(t)
					return true
				}
			}
			return false
		}
		if !infoOf(et).holdsText {
			return false
		}
		changed := false
		for i := range v.Len() {
			changed = w.walk(v.Index(i)) || changed
		}
		return changed
	case reflect.Array:
		if !infoOf(v.Type().Elem()).holdsText {
			return false
		}
		changed := false
		for i := range v.Len() {
			changed = w.walk(v.Index(i)) || changed
		}
		return changed
	case reflect.Struct:
		changed := false
		for _, i := range infoOf(v.Type()).fields {
			changed = w.walk(v.Field(i)) || changed
		}
		return changed
	case reflect.Pointer:
		if v.IsNil() || !infoOf(v.Type().Elem()).holdsText {
			return false
		}
		if !w.visit(v.Pointer()) {
			return false
		}
		return w.walk(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return false
		}
		inner := v.Elem()
		it := inner.Type()
		switch {
		case !infoOf(it).holdsText:
			return false
		case inner.Kind() == reflect.String:
			// Scrubbed as it is, copied only when it changes.
			s := inner.String()
			if s == "" {
				return false
			}
			if t := w.s.String(s); t != s && v.CanSet() {
				cp := reflect.New(it).Elem()
				cp.SetString(t)
				v.Set(cp)
				return true
			}
			return false
		case inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Map ||
			inner.Kind() == reflect.Slice && it.Elem().Kind() != reflect.Uint8:
			// Scrubbed through the reference, which stays what it was.
			return w.walk(inner) && v.CanSet()
		}
		// What an interface holds cannot be set in place: scrub a copy
		// and put it back.
		cp := reflect.New(it).Elem()
		cp.Set(inner)
		if w.walk(cp) && v.CanSet() {
			v.Set(cp)
			return true
		}
	case reflect.Map:
		if v.IsNil() {
			return false
		}
		et := v.Type().Elem()
		if !infoOf(et).holdsText {
			return false
		}
		changed := false
		iter := v.MapRange()
		type kv struct{ k, v reflect.Value }
		var updates []kv
		for iter.Next() {
			if et.Kind() == reflect.String {
				// Scrubbed as it is, copied only when it changes.
				if s := iter.Value().String(); s != "" {
					if t := w.s.String(s); t != s {
						cp := reflect.New(et).Elem()
						cp.SetString(t)
						updates = append(updates, kv{iter.Key(), cp})
					}
				}
				continue
			}
			cp := reflect.New(et).Elem()
			cp.Set(iter.Value())
			if w.walk(cp) {
				updates = append(updates, kv{iter.Key(), cp})
			}
		}
		for _, u := range updates {
			v.SetMapIndex(u.k, u.v)
			changed = true
		}
		return changed
	}
	return false
}
