"""The ops: one module per family; each op's forward and its gradient rule side by side."""
