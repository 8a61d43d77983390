package region

import "testing"

func TestValid(t *testing.T) {
	for name, want := range map[string]bool{
		"us-east-1": true, "eu-central-2": true, "ap-southeast-4": true, "us-gov-west-1": true,
		"cn-north-1": true, "us-iso-east-1": true, "us-isob-east-1": true, "eusc-de-east-1": true,
		"il-central-1": true, "mx-central-1": true,
		"": false, "local": false, "elasticmq": false, "us-east-1a": false, "us-east": false,
		"US-EAST-1": false, "us--1": false, "us-east-123": false, "-east-1": false, "us-east-": false,
		"us-east-1 ": false, "us_east_1": false, "us-east-1/x": false, "east-1": false, "us-east--1": false, "1": false,
		"-": false, "us-east-1-": false,
	} {
		if got := Valid(name); got != want {
			t.Errorf("Valid(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestOwner(t *testing.T) {
	const home = "us-east-1"
	for _, tt := range []struct {
		account, region, key string
	}{
		{"000000000000", "us-east-1", "000000000000"},
		{"000000000000", "", "000000000000"},
		{"000000000000", "eu-west-1", "000000000000@eu-west-1"},
		{"111111111111", "us-gov-west-1", "111111111111@us-gov-west-1"},
	} {
		key := Owner(tt.account, tt.region, home)
		if key != tt.key {
			t.Errorf("Owner(%q, %q) = %q, want %q", tt.account, tt.region, key, tt.key)
		}
		wantRegion := tt.region
		if wantRegion == "" {
			wantRegion = home
		}
		if a, r := Split(key, home); a != tt.account || r != wantRegion {
			t.Errorf("Split(%q) = %q, %q", key, a, r)
		}
	}
}
