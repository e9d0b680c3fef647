package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
)

// fencesPageLimit is the page size collect asks for (the largest a
// sidecar serves).
const fencesPageLimit = store.MaxRecordsLimit

// floorReason says why the highest fence accepted is a sufficient floor;
// it is printed with the floor and is part of the JSON output.
const floorReason = "a registry allocates max(last fence, resource floor, global floor) + 1, so with this floor every fence it issues " +
	"is above every fence any of these sidecars accepted: it continues above the highest fence, and its grants are accepted " +
	"(a lower fence of a new lineage would be FENCE_REGRESSION). It covers only what the sidecars listed had accepted when asked: " +
	"stop the old registry, wait until no proof it signed is fresh, and list every sidecar that keeps its own store"

func newFencesCmd(a *app) *cobra.Command {
	var o fencesOpts
	c := &cobra.Command{
		Use:   "collect --sidecar ADMIN_URL [--sidecar ...] [--admin-token-file F] [--registry URL --apply]",
		Short: "the highest fences of every sidecar, and the fence floor a new registry starts from (--apply raises it)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(cmd); err != nil {
				return err
			}
			return fencesCollect(cmd.Context(), &o, o.asJSON || a.json(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.sidecars, "sidecar", nil, "a sidecar's admin URL (repeat for each; every pod with its own bolt store, one per shared Redis store)")
	f.StringVar(&o.tokenFile, "admin-token-file", os.Getenv("FENCEGATE_ADMIN_TOKEN_FILE"), "file holding the sidecars' admin bearer token")
	f.BoolVar(&o.asJSON, "json", false, "the same as -o json")
	f.BoolVar(&o.apply, "apply", false, "raise the registry's global fence floor to the collected floor (POST /v1/admin/fence-floor; never lowers it)")
	f.StringVar(&o.conn.url, "registry", "", "with --apply: the registry URL")
	f.StringVar(&o.conn.adminTokenFile, "registry-admin-token-file", "", "with --apply: file holding the registry's admin bearer token")
	o.conn.addTLS(f, "with --apply: ")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "time limit of each request")
	return groupCmd("fences", "fences collect: the highest fences of every sidecar, and the fence floor a new registry starts from (--apply raises it)", c)
}

// fencesOpts are the flags of "fences collect".
type fencesOpts struct {
	sidecars      []string
	tokenFile     string
	asJSON, apply bool
	conn          connFlags
	timeout       time.Duration
}

// check rejects flags that do not go together.
func (o *fencesOpts) check(cmd *cobra.Command) error {
	switch {
	case len(o.sidecars) == 0:
		return usagef(cmd, "at least one --sidecar ADMIN_URL is required: every fence any sidecar accepted must be below the floor")
	case o.apply && o.conn.url == "":
		return usagef(cmd, "--apply needs --registry URL")
	case !o.apply && o.conn.url != "":
		return usagef(cmd, "--registry is only used with --apply")
	}
	return nil
}

// collectedFence is one resource's highest fence over every sidecar.
type collectedFence struct {
	Resource     string            `json:"resource"`
	HighestFence uint64            `json:"highestFence"`
	Lineage      string            `json:"lineage,omitempty"`
	IssuerEpoch  uint64            `json:"issuerEpoch"`
	Paused       store.PauseReason `json:"paused,omitempty"`
	// Sidecar is the first sidecar that reported HighestFence; Sidecars
	// counts those that list the resource (replicas sharing a store list
	// the same records).
	Sidecar  string `json:"sidecar"`
	Sidecars int    `json:"sidecars"`
}

// sidecarSummary is what one sidecar answered.
type sidecarSummary struct {
	URL            string `json:"url"`
	Pages          int    `json:"pages"`
	Resources      int    `json:"resources"`
	MaxFence       uint64 `json:"maxFence"`
	MinIssuerEpoch uint64 `json:"minIssuerEpoch"`
	Paused         int    `json:"paused"`
}

// collection is the merged answer of every sidecar (the JSON output).
type collection struct {
	Sidecars []sidecarSummary `json:"sidecars"`
	Fences   []collectedFence `json:"fences"`
	// MaxFence is the highest fence any sidecar accepted (0: none), and
	// MaxFenceResource the resource that holds it.
	MaxFence         uint64 `json:"maxFence"`
	MaxFenceResource string `json:"maxFenceResource,omitempty"`
	// FenceFloor is the floor to start a new registry with: MaxFence.
	FenceFloor  uint64 `json:"fenceFloor"`
	FloorReason string `json:"floorReason"`
	// MaxIssuerEpoch is the highest issuer epoch a sidecar accepts from
	// now or a highest fence's grant carried: the new registry's epoch
	// must be bumped above it.
	MaxIssuerEpoch uint64 `json:"maxIssuerEpoch"`
	// Paused counts paused resources.
	Paused int `json:"paused"`
	// Applied is set by --apply.
	Applied *appliedFloor `json:"applied,omitempty"`
}

// appliedFloor is the result of --apply.
type appliedFloor struct {
	Registry string `json:"registry"`
	Lineage  string `json:"lineage"`
	Before   uint64 `json:"before"`
	After    uint64 `json:"after"`
	Raised   bool   `json:"raised"`
}

func fencesCollect(ctx context.Context, o *fencesOpts, asJSON bool, out, progress io.Writer) error {
	token := ""
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return withExit(exitUsage, fmt.Errorf("--admin-token-file: %w", err), "")
		}
		token = strings.TrimSpace(string(b))
	}
	hc := &http.Client{Timeout: o.timeout}
	col, err := collect(ctx, hc, dedupe(o.sidecars), token, progress)
	if err != nil {
		return fmt.Errorf("%w (no floor: a floor from some sidecars only could be below a fence another accepted)", err)
	}
	if o.apply {
		if col.Applied, err = applyFloor(ctx, &o.conn, col.FenceFloor); err != nil {
			if !asJSON {
				_ = printCollection(out, col)
			}
			return err
		}
	}
	if asJSON {
		return printJSON(out, col)
	}
	return printCollection(out, col)
}

// dedupe drops repeated entries of list, keeping the first of each.
func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// collect asks every sidecar for every page of its fences and merges
// them: per resource the highest fence. Any failure fails the whole
// collection.
func collect(ctx context.Context, hc *http.Client, sidecars []string, token string, progress io.Writer) (*collection, error) {
	col := &collection{FloorReason: floorReason}
	byResource := map[string]*collectedFence{}
	for i, sc := range sidecars {
		sum, err := col.collectSidecar(ctx, hc, sc, token, byResource, func(sum sidecarSummary) {
			fmt.Fprintf(progress, "fences collect: sidecar %d/%d %s: %d pages, %d resources so far\n", i+1, len(sidecars), sc, sum.Pages, sum.Resources)
		})
		if err != nil {
			return nil, fmt.Errorf("sidecar %s: %w", sc, err)
		}
		col.MaxIssuerEpoch = max(col.MaxIssuerEpoch, sum.MinIssuerEpoch)
		col.Sidecars = append(col.Sidecars, sum)
		fmt.Fprintf(progress, "fences collect: sidecar %d/%d %s: %d resources in %d pages, highest fence %d, %d paused\n",
			i+1, len(sidecars), sc, sum.Resources, sum.Pages, sum.MaxFence, sum.Paused)
	}
	col.Fences = make([]collectedFence, 0, len(byResource))
	for _, c := range byResource {
		col.Fences = append(col.Fences, *c)
	}
	slices.SortFunc(col.Fences, func(a, b collectedFence) int { return strings.Compare(a.Resource, b.Resource) })
	for _, c := range col.Fences {
		if c.HighestFence > col.MaxFence {
			col.MaxFence, col.MaxFenceResource = c.HighestFence, c.Resource
		}
		if c.Paused != "" {
			col.Paused++
		}
	}
	col.FenceFloor = col.MaxFence
	return col, nil
}

// collectSidecar reads every page of one sidecar's fences into
// byResource (per resource the highest fence, and the sidecar it came
// from), checking the pages' order; progress is told every 10 pages.
func (col *collection) collectSidecar(ctx context.Context, hc *http.Client, sc, token string, byResource map[string]*collectedFence, progress func(sidecarSummary)) (sidecarSummary, error) {
	base := strings.TrimSuffix(sc, "/")
	sum := sidecarSummary{URL: sc}
	after := ""
	for {
		page, err := fencesPage(ctx, hc, base, after, token)
		if err != nil {
			return sum, err
		}
		sum.Pages++
		if len(page.Fences) > fencesPageLimit {
			return sum, fmt.Errorf("a page of %d entries, asked for %d", len(page.Fences), fencesPageLimit)
		}
		for _, e := range page.Fences {
			if e.Resource <= after {
				return sum, fmt.Errorf("resource %q out of order after %q", e.Resource, after)
			}
			after = e.Resource
			sum.Resources++
			sum.MaxFence = max(sum.MaxFence, e.HighestFence)
			if e.Paused != "" {
				sum.Paused++
			}
			col.MaxIssuerEpoch = max(col.MaxIssuerEpoch, e.IssuerEpoch)
			mergeFence(byResource, e, sc)
		}
		sum.MinIssuerEpoch = max(sum.MinIssuerEpoch, page.MinIssuerEpoch)
		if page.Next == "" {
			return sum, nil
		}
		if page.Next != after {
			return sum, fmt.Errorf("next page after %q, but the page ended at %q", page.Next, after)
		}
		if sum.Pages%10 == 0 {
			progress(sum)
		}
	}
}

// fencesPage GETs one page of a sidecar's fences.
func fencesPage(ctx context.Context, hc *http.Client, base, after, token string) (*adminapi.FencesPage, error) {
	q := url.Values{"limit": {strconv.Itoa(fencesPageLimit)}}
	if after != "" {
		q.Set("after", after)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/fences?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if p, err := fencegate.ReadProblem(resp); err == nil {
			return nil, fmt.Errorf("GET /v1/fences: %d %s: %s", resp.StatusCode, p.Code, p.Detail)
		}
		return nil, fmt.Errorf("GET /v1/fences: %d (a sidecar older than the fence list answers 404)", resp.StatusCode)
	}
	var page adminapi.FencesPage
	dec := json.NewDecoder(io.LimitReader(resp.Body, 64<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&page); err != nil {
		return nil, fmt.Errorf("GET /v1/fences: malformed answer: %w", err)
	}
	return &page, nil
}

// applyFloor raises the registry's global fence floor to floor unless it
// is there already: it never lowers it (nor would the registry).
func applyFloor(ctx context.Context, conn *connFlags, floor uint64) (*appliedFloor, error) {
	c, err := conn.client()
	if err != nil {
		return nil, err
	}
	m, err := c.Meta(ctx)
	if err != nil {
		return nil, fmt.Errorf("registry %s: reading its meta: %w", conn.url, err)
	}
	a := &appliedFloor{Registry: conn.url, Lineage: m.Lineage, Before: m.FenceFloor, After: m.FenceFloor}
	if floor == 0 || m.FenceFloor >= floor {
		return a, nil
	}
	if err := c.RaiseFenceFloor(ctx, "", floor); err != nil {
		return nil, fmt.Errorf("registry %s: raising the global fence floor to %d: %w", conn.url, floor, err)
	}
	if m, err = c.Meta(ctx); err != nil {
		return nil, fmt.Errorf("registry %s: reading its meta after raising the floor: %w", conn.url, err)
	}
	if m.FenceFloor < floor {
		return nil, fmt.Errorf("registry %s: the global fence floor is %d after raising it to %d", conn.url, m.FenceFloor, floor)
	}
	a.After, a.Raised, a.Lineage = m.FenceFloor, true, m.Lineage
	return a, nil
}

// printCollection prints the table and the summary.
func printCollection(out io.Writer, col *collection) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tHIGHEST FENCE\tLINEAGE\tEPOCH\tPAUSED\tSIDECAR")
	for _, c := range col.Fences {
		lineage, paused := c.Lineage, string(c.Paused)
		if lineage == "" {
			lineage = "-"
		}
		if paused == "" {
			paused = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", c.Resource, c.HighestFence, lineage, c.IssuerEpoch, paused, c.Sidecar)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	f := newFieldWriter(out)
	f.row("sidecars", len(col.Sidecars))
	f.row("resources", len(col.Fences))
	f.row("paused", col.Paused)
	if col.MaxFence > 0 {
		f.row("highest fence", fmt.Sprintf("%d (%s)", col.MaxFence, col.MaxFenceResource))
	} else {
		f.row("highest fence", "0 (no sidecar accepted a fence)")
	}
	f.row("fence floor", col.FenceFloor)
	f.row("issuer epoch", col.MaxIssuerEpoch)
	if col.Applied != nil {
		a := col.Applied
		if a.Raised {
			f.row("applied", fmt.Sprintf("the global fence floor of %s (lineage %s) raised from %d to %d", a.Registry, a.Lineage, a.Before, a.After))
		} else {
			f.row("applied", fmt.Sprintf("the global fence floor of %s (lineage %s) is %d already: unchanged (never lowered)", a.Registry, a.Lineage, a.Before))
		}
	}
	if err := f.flush(); err != nil {
		return err
	}
	if col.FenceFloor == 0 {
		fmt.Fprintln(out, "\nNo sidecar listed accepted a fence: the new registry needs no floor.")
	} else {
		fmt.Fprintf(out, "\nStart the new registry with --fence-floor %d --issuer-epoch %d (or fenceFloor: %d, minIssuerEpoch: %d), or raise a running one's floor with --registry URL --apply: %s.\n",
			col.FenceFloor, col.MaxIssuerEpoch+1, col.FenceFloor, col.MaxIssuerEpoch+1, floorReason)
	}
	fmt.Fprintf(out, "Its issuer epoch must be above %d (--issuer-epoch %d at start; a running registry: 'fencegate admin epoch bump', once per step): a sidecar refuses a grant of an epoch below the highest it has seen (EPOCH_REVOKED), "+
		"and once it sees the new registry's, the old registry's grants are refused the same way.\n", col.MaxIssuerEpoch, col.MaxIssuerEpoch+1)
	return nil
}

// mergeFence keeps, per resource, the highest fence seen and the sidecar
// it came from, how many sidecars hold the resource, and a pause any of
// them reports.
func mergeFence(byResource map[string]*collectedFence, e adminapi.FenceEntry, sc string) {
	c := byResource[e.Resource]
	if c == nil {
		c = &collectedFence{Resource: e.Resource}
		byResource[e.Resource] = c
	}
	c.Sidecars++
	if c.Sidecar == "" || e.HighestFence > c.HighestFence {
		c.HighestFence, c.Lineage, c.IssuerEpoch, c.Sidecar = e.HighestFence, e.Lineage, e.IssuerEpoch, sc
	}
	if e.Paused != "" && c.Paused == "" {
		c.Paused = e.Paused
	}
}
