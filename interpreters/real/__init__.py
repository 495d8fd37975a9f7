"""The real interpreter (interpreter layer): git (`git/`), copies, the archive and removal
(`files/`), scripts run contained as the runner (`runner/`), support folders (`support.py`),
and `LocalSystem` (`local.py`), which answers the system effects with them."""
