"""What touching the disk needs: atomic writes, and telling a passing fault of
the machine (no descriptors, no memory, a full disk) from damage."""
