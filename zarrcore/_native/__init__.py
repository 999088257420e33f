"""The compiled bindings of csrc/: one private module per concern, each named after the C it
binds; the Python layers above call them, and they call nothing above errors."""
