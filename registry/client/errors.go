package client

import (
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/internal/problem"
)

// codeError is a sentinel matched by problem code.
type codeError struct{ code string }

func (e *codeError) Error() string { return "client: " + e.code }

// Sentinels, one per problem code of the registry API.
var (
	ErrInvalidRequest     error = &codeError{"INVALID_REQUEST"}
	ErrIdentityRequired   error = &codeError{"IDENTITY_REQUIRED"}
	ErrNotOwner           error = &codeError{"NOT_OWNER"}
	ErrPolicyDenied       error = &codeError{"POLICY_DENIED"}
	ErrLeaseHeld          error = &codeError{"LEASE_HELD"}
	ErrLeaseNotHeld       error = &codeError{"LEASE_NOT_HELD"}
	ErrRequestConflict    error = &codeError{"REQUEST_CONFLICT"}
	ErrNotFound           error = &codeError{"NOT_FOUND"}
	ErrAdminRequired      error = &codeError{"ADMIN_REQUIRED"}
	ErrBackendUnavailable error = &codeError{"BACKEND_UNAVAILABLE"}
)

// ErrUnexpectedResponse is returned for an answer that is neither the
// expected JSON nor a problem document.
var ErrUnexpectedResponse = errors.New("client: unexpected response")

// Error is a problem answered by the server.
type Error struct {
	StatusCode int
	Problem    *problem.Details
}

func (e *Error) Error() string {
	return fmt.Sprintf("client: %d %s", e.StatusCode, e.Problem.Error())
}

// Code is the problem's stable code.
func (e *Error) Code() string { return e.Problem.Code }

// Is matches the sentinel of the problem's code.
func (e *Error) Is(target error) bool {
	var c *codeError
	return errors.As(target, &c) && c.code == e.Problem.Code
}
