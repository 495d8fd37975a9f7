"""The real interpreter (interpreter layer): git (`git/`), copies and removal (`files/`), the
source archive (`archive/`), the results folder (`resultsfolder/`), scripts run contained as
the runner (`runner/`), support folders (`support.py`), and `LocalSystem` (`local.py`), which
answers the system effects with them."""
