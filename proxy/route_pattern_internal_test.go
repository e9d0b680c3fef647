package proxy

import (
	"fmt"
	"testing"
)

// A resource template's pattern is compiled once per process and matches
// what the template produces, no more; the kept patterns stay bounded.
func TestResourcePatternCompiledOnce(t *testing.T) {
	a, b := resourcePattern("item/{id}"), resourcePattern("item/{id}")
	if a != b {
		t.Error("the same template compiled twice")
	}
	for res, want := range map[string]bool{"item/42": true, "item/": false, "item/4/2": false, "xitem/42": false, "item/42x": true} {
		if got := a.MatchString(res); got != want {
			t.Errorf("%q: %v, want %v", res, got, want)
		}
	}
	if c := resourcePattern("order/{id}"); c == a || c.MatchString("item/42") {
		t.Error("another template shares the pattern")
	}
	for i := range 3 * maxResourcePatterns {
		resourcePattern(fmt.Sprintf("r%d/{id}", i))
	}
	resourcePatterns.mu.Lock()
	n := len(resourcePatterns.re)
	resourcePatterns.mu.Unlock()
	if n > maxResourcePatterns {
		t.Errorf("%d patterns kept, at most %d", n, maxResourcePatterns)
	}
}
