"""What makes a run durable and visible: its folder and lock (``folder``), checkpoints written
atomically and read as data (``checkpoints``, ``state_file``, ``state_checks``, ``seal``), its time
across legs (``run_time``), its progress lines (``progress``) and learning curve (``curve``)."""
