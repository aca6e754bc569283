# disarm.sh (after arm.sh and the run): disarms the watchdog and exits
# with the run's status. One line, as arm.sh.
__mu_c=$?; \
kill $__mu_w2 2>/dev/null; \
exit $__mu_c
