// Package faultproxy is a fault-injecting TCP proxy for tests. It listens
// on 127.0.0.1:0 and forwards every connection to a target; its mode,
// switchable at any time, decides what happens to the bytes:
//
//   - Pass forwards both ways;
//   - DropResponse forwards the request to the target and, when the
//     target's answer starts to come back, discards it and closes the
//     client's connection: the request was delivered (and applied), its
//     answer is lost;
//   - Delay forwards both ways, holding every chunk for the configured
//     delay first (a slow network; a long delay is a black hole);
//   - Cut closes every open connection at once, and closes new ones as
//     soon as the client sends anything, forwarding nothing: requests are
//     lost before delivery;
//   - Refuse closes every open connection and resets new ones at once,
//     reading nothing: an outage.
//
// SetModeN applies a mode to the next n faults only (n dropped responses,
// n cut or refused connections), then returns to Pass. It is meant for
// HTTP/1.1 clients: a "response" is whatever the target sends next.
package faultproxy
