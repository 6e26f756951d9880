package scrub

import "reflect"

// ReferenceValue is Value as it was before it learnt which types hold no
// text: a walk of everything, which the tests hold Value to.
func (s *Scrubber) ReferenceValue(v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	w := referenceWalker{s: s, seen: map[uintptr]bool{}}
	return w.walk(rv.Elem())
}

type referenceWalker struct {
	s    *Scrubber
	seen map[uintptr]bool // pointers visited, so shared or cyclic data is walked once
}

func (w *referenceWalker) walk(v reflect.Value) bool {
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
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			if t := w.s.Bytes(b); len(t) != len(b) || string(t) != string(b) {
				if v.CanSet() {
					v.SetBytes(t)
					return true
				}
			}
			return false
		}
		changed := false
		for i := range v.Len() {
			changed = w.walk(v.Index(i)) || changed
		}
		return changed
	case reflect.Array:
		changed := false
		for i := range v.Len() {
			changed = w.walk(v.Index(i)) || changed
		}
		return changed
	case reflect.Struct:
		changed := false
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				changed = w.walk(v.Field(i)) || changed
			}
		}
		return changed
	case reflect.Pointer:
		if v.IsNil() || w.seen[v.Pointer()] {
			return false
		}
		w.seen[v.Pointer()] = true
		return w.walk(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return false
		}
		// What an interface holds cannot be set in place: scrub a copy
		// and put it back.
		inner := v.Elem()
		cp := reflect.New(inner.Type()).Elem()
		cp.Set(inner)
		if w.walk(cp) && v.CanSet() {
			v.Set(cp)
			return true
		}
	case reflect.Map:
		if v.IsNil() {
			return false
		}
		changed := false
		iter := v.MapRange()
		type kv struct{ k, v reflect.Value }
		var updates []kv
		for iter.Next() {
			cp := reflect.New(iter.Value().Type()).Elem()
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
