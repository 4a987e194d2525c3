"""ember's main job: train an MLP or a small CNN on scikit-learn's handwritten digits.

    python examples/digits.py --model cnn --epochs 30 --checkpoint digits.pt --plot digits.png

The code lives in the installed package (``ember.examples.digits``, also runnable as
``python -m ember.examples.digits`` or the ``ember-digits`` console script); see its
docstring for the models, the defaults and the accuracy they reach.
"""
from ember.examples.digits import main

if __name__ == "__main__":
    main()
