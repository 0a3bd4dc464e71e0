"""Pictures of what the lessons explain (host and device, the launch queue, what each rank holds).

One module per lesson, ``lessonNN.py``, each function drawing one diagram with matplotlib and
returning the figure, so a lesson shows it from a cell (it renders in JupyterLab, on Colab from a
lesson opened alone, on the site and in the decks: no file beside the notebook is needed). Where a
diagram has numbers (times, bytes), they are arguments: the lesson passes this run's measurements.
The cell's caption, a markdown line under it, says in words what the picture shows (its alt text).
"""
