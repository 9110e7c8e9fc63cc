package main

import (
	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/workers"
)

// modelRouter returns the router of the configured model servers (SPEC
// R-M1..R-M7); with none configured its calls fail and the model jobs wait.
// Probes are due every 15 s less the runner's poll, so that with the poll's
// granularity no server goes longer than 15 s unprobed (R-M3). The router
// reads the daemon's clock when a test sets one.
func (d *Daemon) modelRouter() (*models.Router, error) {
	cfg := models.FromOptions(d.Config.Options)
	cfg.ProbeEvery = workers.MaxProbeEvery - workers.DefaultPoll
	cfg.Now = d.Now
	return models.New(cfg)
}
