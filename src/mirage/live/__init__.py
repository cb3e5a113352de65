"""The live side: a real Slurm cluster, through Slurm's own commands (mirage.live.slurm)."""
