"""The one reader of capture bytes: XSpace (.xplane.pb), HloProto and pprof (.prof) decode here and nowhere else."""
