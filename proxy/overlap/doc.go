// Package overlap answers whether chi route patterns can match a common
// path: the check behind the rule that a route below enforce may not take
// paths of an enforced route (proxy's Config.Validate) and behind the
// enforcement ledger's refusal of a downgrade that lets an enforced
// shape's paths through unchecked (proxy/ledger.go). It is pure: no
// request reaches it; proxy calls Search at start-up, never on the request
// path.
package overlap
