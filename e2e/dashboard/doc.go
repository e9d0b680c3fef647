// Command dashboard draws the layout of fencegate's Grafana dashboard
// (charts/fencegate/files/dashboard.json) as an SVG picture
// (docs/images/dashboard.svg): every panel at its gridPos, with its title
// and panel type, under the labels of its rows. It also refuses a layout
// whose panels overlap or leave Grafana's 24-column grid.
//
// Run it from anywhere in the repository after editing the dashboard:
//
//	go run ./e2e/dashboard
//
// Flags -in and -out name other files (relative to the repository root).
// The test in this directory fails while the committed picture differs
// from what the dashboard draws.
package main
