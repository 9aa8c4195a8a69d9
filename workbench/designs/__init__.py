"""Designs beyond one screen: sessions saved and loaded, a plan pinned and compared, the chosen
mapping exported. Plain functions on plans and platforms (no widgets), for the apps and the
command line alike."""
