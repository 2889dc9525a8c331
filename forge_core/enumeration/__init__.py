"""Stage 0: plans and the calls they still need (`planning`), and the resumable run that stores
every (query, arm) outcome as it lands (`runner`)."""
