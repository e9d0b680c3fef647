package adminapi

import (
	"encoding/json"
	"net/http"

	"github.com/fencegate/fencegate"
)

// problem answers with a problem of an explicit status.
func problem(w http.ResponseWriter, status int, code fencegate.Code, detail string) {
	fencegate.WriteProblem(w, fencegate.NewProblem(code, detail).WithStatus(status), 0)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeList[T any](w http.ResponseWriter, list []T, err error) {
	if err != nil {
		problem(w, 503, fencegate.CodeStoreUnavailable, err.Error())
		return
	}
	if list == nil {
		list = []T{}
	}
	writeJSON(w, 200, list)
}

// decodeBody decodes a JSON body of at most 1 MiB with no unknown fields,
// or answers 400 and reports false.
func decodeBody(w http.ResponseWriter, req *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		problem(w, 400, fencegate.CodeInvalidRequest, "malformed JSON body: "+err.Error())
		return false
	}
	return true
}

// problemExtra answers with a problem carrying extension members.
func problemExtra(w http.ResponseWriter, status int, code fencegate.Code, detail string, extra map[string]any) {
	p := fencegate.NewProblem(code, detail).WithStatus(status)
	for k, v := range extra {
		p.With(k, v)
	}
	fencegate.WriteProblem(w, p, 0)
}
