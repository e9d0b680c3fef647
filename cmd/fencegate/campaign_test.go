package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCampaignCommand(t *testing.T) {
	var out strings.Builder
	if err := runCampaign(context.Background(), []string{"--n", "340", "--seed", "3", "--quiet"}, &out); err != nil {
		t.Fatalf("campaign: %v\n%s", err, out.String())
	}
	s := out.String()
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
	var out strings.Builder
	if err := runCampaign(context.Background(), []string{"--n", "20", "--kinds", "alg-none,expired", "--workers", "1", "--quiet"}, &out); err != nil {
		t.Fatalf("campaign: %v", err)
	}
	if strings.Contains(out.String(), "bitflip") || !strings.Contains(out.String(), "expired") {
		t.Errorf("--kinds not applied:\n%s", out.String())
	}
}

func TestCampaignCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--kinds", "bitflip,nope"}, {"--n", "0"}, {"--workers", "-2"}, {"extra"}} {
		var ee *exitError
		err := runCampaign(context.Background(), append(args, "--quiet"), &strings.Builder{})
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: %v, want exit code 2", args, err)
		}
	}
}
