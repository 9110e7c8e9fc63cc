package main

import (
	"github.com/hearth-memory/hearth/server/homeassistant"
	"github.com/hearth-memory/hearth/server/sweep"
)

// sweeper returns what the entity sweep reads Home Assistant with: the
// Supervisor's API when SUPERVISOR_TOKEN was set (inside Home Assistant),
// and nothing otherwise, where entity anchors stay unknown (docs/design.md R-H3). It
// logs which, never the token.
func (d *Daemon) sweeper() (*sweep.Sweeper, error) {
	if d.Config.SupervisorToken == "" {
		d.Log.Info("no SUPERVISOR_TOKEN: entity anchors are not checked and stay unknown")
		return sweep.New(nil), nil
	}
	c, err := homeassistant.New(homeassistant.Config{URL: d.Config.SupervisorURL, Token: d.Config.SupervisorToken})
	if err != nil {
		return nil, err
	}
	d.Log.Info("entity anchors are checked against Home Assistant through the Supervisor",
		"every_hours", d.Config.Options.AnchorSweepHours)
	return sweep.New(c), nil
}
