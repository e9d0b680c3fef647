package main

import (
	"strings"
	"testing"
)

func TestCampaignCommand(t *testing.T) {
	r := runCLI(t, "campaign", "--n", "340", "--seed", "3", "--quiet")
	if r.code != 0 {
		t.Fatalf("campaign: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
	s := r.stdout
	if !strings.HasSuffix(s, "campaign: PASS (0 of 340 accepted)\n") {
		t.Errorf("output does not end with the PASS line:\n%s", s)
	}
	for _, k := range []string{"bitflip", "alg-none", "typ-confusion", "wrong-owner", "total"} {
		if !strings.Contains(s, k) {
			t.Errorf("table lacks %s:\n%s", k, s)
		}
	}
}

func TestCampaignCommandKinds(t *testing.T) {
	r := runCLI(t, "campaign", "--n", "20", "--kinds", "alg-none,expired", "--workers", "1", "--quiet")
	if r.code != 0 {
		t.Fatalf("campaign: exit %d %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "bitflip") || !strings.Contains(r.stdout, "expired") {
		t.Errorf("--kinds not applied:\n%s", r.stdout)
	}
}

func TestCampaignCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--kinds", "bitflip,nope"}, {"--n", "0"}, {"--workers", "-2"}, {"extra"}} {
		if r := runCLI(t, append(append([]string{"campaign"}, args...), "--quiet")...); r.code != exitUsage {
			t.Errorf("%v: exit %d %s, want exit code 2", args, r.code, r.stderr)
		}
	}
}
