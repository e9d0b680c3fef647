package sim

import "errors"

var (
	// ErrOptions: the run's options are invalid (unknown fault, no
	// rounds, ...). Nothing ran.
	ErrOptions = errors.New("sim: invalid options")
	// ErrSetup: a real part could not be built (a key, the registry, a
	// sidecar). It is a bug or an environment problem, never a verdict on
	// the code under test.
	ErrSetup = errors.New("sim: setup failed")
)
