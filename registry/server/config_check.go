package server

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/fencegate/fencegate/internal/listenaddr"
)

// ErrConfigKey is the problem of a configuration key that does not decode
// (an unknown key, a value of the wrong type).
var ErrConfigKey = errors.New("config: key does not decode")

// LoadAll is Load that goes on past keys that do not decode: it returns
// the configuration with every other key applied, and each undecodable
// key as an ErrConfigKey (joined), so that a caller validating it
// (`fencegate registry --check`) reports every problem at once. A file
// that cannot be read or is not YAML at all is returned as Load returns
// it.
func LoadAll(path string) (Config, error) {
	c, err := Load(path)
	var te *yaml.TypeError
	if err == nil || !errors.As(err, &te) {
		return c, err
	}
	if c.Listen == "" {
		c.Listen = listenaddr.Default(DefaultListenPort)
	}
	errs := make([]error, 0, len(te.Errors))
	for _, e := range te.Errors {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrConfigKey, path, e))
	}
	return c, errors.Join(errs...)
}
