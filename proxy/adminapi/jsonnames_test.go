package adminapi_test

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
)

// TestAnswersUseLowerCamelNames: every JSON member of every admin API
// body and answer, nested ones included, is named by a json tag in
// lowerCamel (no Go field name such as "Applied" leaks into the wire).
func TestAnswersUseLowerCamelNames(t *testing.T) {
	for _, v := range []any{
		adminapi.ReconcileRequest{}, adminapi.ReconcileAnswer{}, adminapi.FencesPage{}, adminapi.TrustAcceptRequest{},
		adminapi.StoreStatus{}, adminapi.StoreLossAnswer{},
		store.Receipt{}, store.Record{}, store.Mutation{}, store.Quarantine{}, authn.TrustList{}, authn.TrustAccepted{},
	} {
		checkNames(t, reflect.TypeOf(v), reflect.TypeOf(v).String(), map[reflect.Type]bool{})
	}
}

var (
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func checkNames(t *testing.T, typ reflect.Type, path string, seen map[reflect.Type]bool) {
	t.Helper()
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || seen[typ] || typ.Implements(marshaler) || reflect.PointerTo(typ).Implements(marshaler) ||
		typ.Implements(textMarshaler) || reflect.PointerTo(typ).Implements(textMarshaler) {
		return
	}
	seen[typ] = true
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			checkNames(t, f.Type, path, seen)
			continue
		}
		if tag == "-" {
			continue
		}
		if tag == "" || !unicode.IsLower(rune(tag[0])) || strings.ContainsAny(tag, "_- ") {
			t.Errorf("%s.%s is written as %q: want a lowerCamel json tag", path, f.Name, cmpName(tag, f.Name))
		}
		checkNames(t, f.Type, path+"."+f.Name, seen)
	}
}

func cmpName(tag, field string) string {
	if tag == "" {
		return field
	}
	return tag
}
