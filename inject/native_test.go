package inject_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/inject"
)

func TestNativeSupported(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.28.9": false, "v1.29.0": true, "v1.31.4-gke.1200": true, "v1.30.2+k3s1": true,
		"v1.27.16-eks-a737599": false, "v2.0.0": true,
	} {
		got, err := inject.NativeSupported(v)
		if err != nil || got != want {
			t.Errorf("NativeSupported(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	if _, err := inject.NativeSupported("not a version"); !errors.Is(err, inject.ErrNative) {
		t.Errorf("err %v, want ErrNative", err)
	}
}

func TestNativeModes(t *testing.T) {
	for _, c := range []struct {
		mode    inject.NativeMode
		version string
		want    bool
	}{
		{inject.NativeAlways, "v1.20.0", true},
		{inject.NativeNever, "v1.31.0", false},
		{inject.NativeAuto, "v1.31.0", true},
		{inject.NativeAuto, "v1.28.0", false},
	} {
		got, err := c.mode.Native(c.version)
		if err != nil || got != c.want {
			t.Errorf("%s on %s: %v, %v; want %v", c.mode, c.version, got, err, c.want)
		}
	}
	if _, err := inject.ParseNativeMode("sometimes"); err == nil {
		t.Error("ParseNativeMode accepted sometimes")
	}
}
