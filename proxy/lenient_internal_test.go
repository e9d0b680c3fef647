package proxy

import (
	"slices"
	"testing"
)

func TestLenientPatterns(t *testing.T) {
	for pattern, want := range map[string][]string{
		"/v1/items/{id}":          {"/V1/ITEMS/{id}"},
		"/v1/items/":              {"/V1/ITEMS"},
		"//v1//items/{id}/":       {"/V1/ITEMS/{id}"},
		"/v1/items/{id:[a-z]+}":   {"/V1/ITEMS/{id:(?i)[a-z]+}"},
		"/v1/files/*":             {"/V1/FILES/*", "/V1/FILES"},
		"/*":                      {"/*", "/"},
		"/":                       {"/"},
		`/v1\items\{id}`:          {"/V1/ITEMS/{id}"},
		"/v1/{a:[0-9]{2}}/x/{b:}": {"/V1/{a:(?i)[0-9]{2}}/X/{b:}"},
		"/v1/my%20items/{id}":     {"/V1/MY ITEMS/{id}"},
		"/v1/{a}//{b}":            {"/V1/{a}/{b}"},
		"/v1/x{a}.{b}/":           {"/V1/X{a}.{b}"},
	} {
		if got := lenientPatterns(pattern); !slices.Equal(got, want) {
			t.Errorf("lenientPatterns(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// TestLookalikeOfALedgerShape: an enforced shape no route is configured
// for is a look-alike too.
func TestLookalikeOfALedgerShape(t *testing.T) {
	l, err := newLookalikes(nil, []string{"PUT /v1/items/{}", "PROPPATCH /v1/dav/{:[0-9]+}"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, want string }{
		{"PUT", "/v1/items/1/", "PUT /v1/items/{}"},
		{"put", "/V1/items/1", "PUT /v1/items/{}"},
		{"PROPPATCH", "/v1/dav/%37/", "PROPPATCH /v1/dav/{:[0-9]+}"},
		{"PROPPATCH", "/v1/dav/x/", ""},
		{"POST", "/v1/items/1/", ""},
	} {
		target, _, found, bad := l.find(c.method, c.path, ModeOff)
		if bad || found != (c.want != "") || (found && target.name() != c.want) {
			t.Errorf("%s %s: %v %v %v, want %q", c.method, c.path, target.name(), found, bad, c.want)
		}
	}
}
