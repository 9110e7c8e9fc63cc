// Package options holds Hearth's start-up options (docs/design.md §17): their Go
// shape, their defaults, and how they are read once at start from
// options.json and from command-line overrides, then validated. The reading
// rules, ranges and decisions are in docs/options.md.
package options
