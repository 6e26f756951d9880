// Command k8slint decodes Kubernetes manifests strictly into the k8s.io/api types and prints them as JSON; it is its own module because k8s.io/api would bring the Kubernetes machinery into the main one.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// object is one decoded document, as the caller's test reads it.
type object struct {
	File   string `json:"file"`
	Index  int    `json:"index"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Object any    `json:"object"`
}

// kinds are the types the manifests may hold. Schema validators such as
// kubeconform download their schemas, which the machines that run the
// tests cannot; the Go types are the schema the API server decodes with.
var kinds = map[string]func() any{
	"v1/PersistentVolumeClaim": func() any { return new(corev1.PersistentVolumeClaim) },
	"v1/ConfigMap":             func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                func() any { return new(corev1.Secret) },
	"batch/v1/Job":             func() any { return new(batchv1.Job) },
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: k8slint FILE...")
		os.Exit(2)
	}
	var out []object
	failed := false
	for _, path := range os.Args[1:] {
		objs, err := lint(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
		out = append(out, objs...)
	}
	if failed {
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func lint(path string) ([]object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []object
	var errs []error
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			i--
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, i, err))
			continue
		}
		mk, ok := kinds[meta.APIVersion+"/"+meta.Kind]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: document %d: apiVersion %s, kind %s: not a kind this check knows", path, i, meta.APIVersion, meta.Kind))
			continue
		}
		obj := mk()
		// Strict: an unknown or misplaced field, or a duplicate key, is an
		// error rather than something the API server would drop.
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d (%s %s): %w", path, i, meta.Kind, meta.Metadata.Name, err))
			continue
		}
		out = append(out, object{File: path, Index: i, Kind: meta.Kind, Name: meta.Metadata.Name, Object: obj})
	}
	return out, errors.Join(errs...)
}
