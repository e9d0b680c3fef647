package server

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/fencegate/fencegate/internal/confcheck"
)

// ErrConfigKey is the problem of a configuration key that does not decode
// (an unknown key, a value of the wrong type).
var ErrConfigKey = errors.New("proxy: config: key does not decode")

// Check loads the file at path and reports every problem at once (what
// `fencegate proxy --check` prints): the keys that do not decode (unknown
// keys, wrong types), then Validate's, so an unknown key does not hide
// the other problems. A file that cannot be read or is not YAML at all is
// the one problem reported. The configuration is returned with its
// defaults filled, for the flags that override it.
func Check(path string) (Config, error) {
	c, err := Load(path)
	var te *yaml.TypeError
	if err != nil && !errors.As(err, &te) {
		return c, err
	}
	var p confcheck.Problems
	if te != nil {
		c.SetDefaults()
		for _, e := range te.Errors {
			p.Append(fmt.Errorf("%w: %s: %s", ErrConfigKey, path, e))
		}
	}
	p.AppendErr(c.Validate())
	return c, p.Err()
}
