package fencegate_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/fencegate/fencegate"
)

// A server refuses a request with a problem of a stable code; a client
// reads it back and switches on the code.
func Example() {
	rec := httptest.NewRecorder()
	fencegate.WriteProblem(rec, fencegate.NewProblem(fencegate.CodeStaleOwner, "fence 3 is below 4").With("highestFence", 4), 0)

	p, err := fencegate.ReadProblem(rec.Result())
	if err != nil {
		fmt.Println(err)
		return
	}
	switch p.Code {
	case fencegate.CodeStaleOwner:
		fmt.Println(p.Status, p.Code, p.Extra["highestFence"])
	default:
		fmt.Println("other:", p)
	}
	// Output: 409 STALE_OWNER 4
}

// Segments and operation IDs: what a worker sends in Fence-Segment and
// what the sidecar forwards in Fence-Operation-Id.
func ExampleParseSegment() {
	req, _ := http.NewRequest(http.MethodPut, "http://sidecar/v1/batches/7", nil)
	req.Header.Set(fencegate.HeaderSegment, fencegate.FormatSegment(3))

	seq, err := fencegate.ParseSegment(req.Header.Get(fencegate.HeaderSegment))
	fmt.Println(seq, err)
	root := fencegate.Digest([]byte("batches/7\n5\ngrant-1"))
	fmt.Println(fencegate.OperationID(root, seq) == root+"/3")

	_, err = fencegate.ParseSegment("4294967296") // above MaxSeq
	fmt.Println(err)
	// Output:
	// 3 <nil>
	// true
	// fencegate: invalid segment: "4294967296" is not between 1 and 4294967295
}

func ExampleValidateResource() {
	fmt.Println(fencegate.ValidateResource("invoice-batch/2026-07-19"))
	fmt.Println(fencegate.ValidateResource("invoice batch/../x"))
	// Output:
	// <nil>
	// fencegate: invalid resource: resource has a character outside [A-Za-z0-9-_.:@~/] at byte 7
}
