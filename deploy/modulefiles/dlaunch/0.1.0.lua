-- -*- lua -*-
-- Lmod module for dlaunch 0.1.0: puts dlaunch, dlaunch-agent, dlaunch-relay and dlaunch-worker on PATH and
-- adds the installation's site-profile directory to DLAUNCH_SITE_PATH.
--
-- Installed as <prefix>/share/modulefiles/dlaunch/0.1.0.lua, so the prefix is found from the
-- file's own location and one copy works wherever the tree is installed. A site that keeps its
-- module files elsewhere sets `root` below to the install prefix.

local version = "0.1.0"
local root = myFileName():match("^(.*)/share/modulefiles/dlaunch/[^/]+$")
if root == nil then
  LmodError("dlaunch module: cannot find the install prefix from ", myFileName(),
            "; edit `root` in this file to point at the dlaunch installation")
end

whatis("Name: dlaunch")
whatis("Version: " .. version)
whatis("Category: tools, machine learning")
whatis("Description: launches distributed (DDP) training jobs on PBS Pro, Cobalt and Slurm " ..
       "clusters: one agent per node, rendezvous, live health and throughput")

help([[
dlaunch ]] .. version .. [[ starts data-parallel training jobs across the nodes of an
allocation and reports their health and throughput.

  dlaunch script job.yaml     show the batch script for a job, submit nothing
  dlaunch submit job.yaml     write the job directory and submit it (qsub / sbatch)
  dlaunch run job.yaml        run inside an allocation you already hold (or on one machine)

Examples:   ]] .. root .. [[/share/dlaunch/examples
Site files: ]] .. root .. [[/share/dlaunch/templates/sites (built in),
            ]] .. root .. [[/etc/dlaunch/sites (this installation's own),
            ~/.config/dlaunch/sites (yours)
Docs:       ]] .. root .. [[/share/doc/dlaunch
]])

prepend_path("PATH", pathJoin(root, "bin"))
-- Profiles placed here by the centre (their own queues, accounts, module loads) win over the
-- built-in ones; a user's DLAUNCH_SITE_PATH entries set before loading stay ahead of them.
append_path("DLAUNCH_SITE_PATH", pathJoin(root, "etc", "dlaunch", "sites"))
setenv("DLAUNCH_ROOT", root)
