"""What `knee recommend` writes under results/X/recommend/ (outputs) and its README and
figure (report)."""
