# stop.sh MARK (after kill.sh): kill every process of run MARK.
k "$1"
