"""The context pipeline as pure functions: estimator, calibration, stages 0-3, rendering."""
