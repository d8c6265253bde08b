"""A test-only app (installed when ERP_TESTING=1) with concrete models for shared machinery."""
