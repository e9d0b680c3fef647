package inject

import "strings"

// Operation is one RFC 6902 JSON patch operation. The injector only adds:
// it never rewrites or removes what the pod had, so fields of a newer
// Kubernetes than this package knows survive the patch.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func add(path string, value any) Operation { return Operation{Op: "add", Path: path, Value: value} }

// pointerEscape escapes a key for a JSON pointer (RFC 6901).
func pointerEscape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
